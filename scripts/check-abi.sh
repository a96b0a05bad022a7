#!/bin/sh
# A shared library's exported ABI against its committed baseline
# (docs/ARCHITECTURE.md, "Versions and the ABI"); make check-abi runs it for
# libpairshard.so (abi/libpairshard.abi) and libpairshard-reader.so
# (abi/libpairshard-reader.abi).
#
#   check-abi.sh check    LIB BASELINE   compare; fail on an incompatible change
#   check-abi.sh baseline LIB BASELINE   rewrite BASELINE from LIB
#
# The baseline is abidw's XML of the exported interface only: the types of
# include/pairshard/*.h reachable from exported ps_ functions (the library
# is built with -fvisibility=hidden, so only PS_API symbols are exported),
# without paths, source locations or DT_NEEDED (which differ between
# checkouts and between builds with and without CUDA), with hashed type
# ids, so the same library gives the same file anywhere. The library must
# carry DWARF (-g, as the Makefile's OPT has).
#
# abidiff's status is a bit set: 1 error, 2 usage, 4 the ABI changed, 8 a
# change abidiff knows to be incompatible (a symbol removed). abidiff calls
# a reordered field only "a change", so every change fails here except
# what abi/compatible.suppr allows (fields appended to the growing structs
# of pairshard/common.h) and added functions. A change with the baseline's
# soname fails; with another soname (PS_ABI_VERSION bumped) the check asks
# for the baseline to be recorded anew, which is the deliberate step.
set -eu
mode=$1 lib=$2 baseline=$3
root=$(cd "$(dirname "$0")/.." && pwd)

sh "$root/scripts/install-deps.sh" --abi

soname_of() { readelf -d "$1" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p'; }
dump() {
    abidw --headers-dir "$root/include/pairshard" --drop-private-types \
        --no-corpus-path --no-comp-dir-path --no-show-locs --no-elf-needed \
        --type-id-style hash --exported-interfaces-only --out-file "$2" "$1"
}

if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "check-abi: $lib has no debug information (build with -g)" >&2
    exit 1
fi

case $mode in
baseline)
    mkdir -p "$(dirname "$baseline")"
    dump "$lib" "$baseline.tmp"
    mv "$baseline.tmp" "$baseline"
    echo "check-abi: recorded $(soname_of "$lib")'s ABI in $baseline:" \
        "$(grep -c '<elf-symbol ' "$baseline") symbols; commit it"
    ;;
check)
    [ -f "$baseline" ] || { echo "check-abi: no baseline $baseline (make abi-baseline)" >&2; exit 1; }
    new=$(soname_of "$lib")
    old=$(sed -n "s/.*<abi-corpus [^>]*soname='\([^']*\)'.*/\1/p" "$baseline" | head -n 1)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    dump "$lib" "$tmp/new.abi"
    # First the changes this library does not allow without a soname bump:
    # added functions and appended fields of growing structs left out.
    rc=0
    abidiff --no-show-locs --no-added-syms --suppressions "$root/abi/compatible.suppr" \
        "$baseline" "$tmp/new.abi" >"$tmp/report" 2>&1 || rc=$?
    if [ $((rc & 3)) != 0 ]; then
        cat "$tmp/report" >&2
        echo "check-abi: abidiff failed (status $rc)" >&2
        exit 1
    fi
    if [ "$new" != "$old" ]; then
        cat "$tmp/report"
        echo "check-abi: the soname is $new, the baseline's $old: record the new ABI" \
            "with 'make abi-baseline' and commit $baseline" >&2
        exit 1
    fi
    # abidiff's rule for appended fields also lets a reordering through that
    # keeps a struct's size: check the growing structs' prefixes ourselves.
    growing=$(sed -n 's/^  name_regexp = ^ps_(\(.*\))\$$/\1/p' "$root/abi/compatible.suppr" |
        tr '|' '\n' | sed 's/^/ps_/')
    # shellcheck disable=SC2086
    python3 "$root/scripts/abi-growth.py" "$baseline" "$tmp/new.abi" $growing \
        >>"$tmp/report" || rc=8
    if [ "$rc" != 0 ]; then
        cat "$tmp/report"
        echo "check-abi: FAIL: an incompatible ABI change with the soname unchanged ($new):" \
            "undo it, or bump PS_ABI_VERSION (include/pairshard/common.h) and run" \
            "'make abi-baseline'" >&2
        exit 1
    fi
    # Then everything, for the record.
    rc=0
    abidiff --no-show-locs "$baseline" "$tmp/new.abi" >"$tmp/all" 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
        cat "$tmp/all"
        echo "check-abi: ok: compatible changes only ($new); 'make abi-baseline' records them"
    else
        echo "check-abi: ok: $new matches $baseline"
    fi
    ;;
*)
    echo "usage: check-abi.sh check|baseline LIB BASELINE" >&2
    exit 2
    ;;
esac
