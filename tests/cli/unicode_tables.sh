#!/bin/sh
# The Unicode tables that decide token ids are generated, never edited:
# scripts/gen-unicode.py, run on Debian's Unicode Character Database
# (unicode-data) and scripts/unicode-hf-delta.txt, writes exactly the
# committed tokenize/unicode_tables.c and tokenize/pretok_uclass.inc; a
# hand edit of either, a delta line the UCD has caught up with, and a UCD of
# another version than the delta was checked against all fail. TAP.
. "$PS_ROOT/tests/tap.sh"
GEN="$PS_ROOT/scripts/gen-unicode.py"
UCD=/usr/share/unicode

[ -r "$UCD/UnicodeData.txt" ] || sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt.log" unicode-data
# no skip: make installs unicode-data (scripts/install-deps.sh)
[ -r "$UCD/UnicodeData.txt" ]
check "the Unicode Character Database is installed ($UCD, Debian unicode-data)" $? "$TMP/apt.log"

python3 "$GEN" --check >"$TMP/out" 2>&1
check "the committed tables are what scripts/gen-unicode.py generates" $? "$TMP/out"

# a copy of the tree's generated files, one of them edited by hand
mkdir -p "$TMP/tree/tokenize"
cp "$PS_ROOT/tokenize/unicode_tables.c" "$PS_ROOT/tokenize/pretok_uclass.inc" "$TMP/tree/tokenize/"
python3 "$GEN" --check --out "$TMP/tree" >"$TMP/out" 2>&1
check "an unchanged copy passes" $? "$TMP/out"
sed -i 's/{0x2E43, 0x2E4F}/{0x2E42, 0x2E4F}/' "$TMP/tree/tokenize/unicode_tables.c"
python3 "$GEN" --check --out "$TMP/tree" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "tokenize/unicode_tables.c differs" "$TMP/out"
check "a hand-edited unicode_tables.c fails, naming it" $? "$TMP/out"
python3 "$GEN" --out "$TMP/tree" >/dev/null 2>&1 &&
    cmp -s "$TMP/tree/tokenize/unicode_tables.c" "$PS_ROOT/tokenize/unicode_tables.c"
check "regenerating the copy restores the committed file" $?
printf '{0x0041, 0x0041, 1},\n' >>"$TMP/tree/tokenize/pretok_uclass.inc"
python3 "$GEN" --check --out "$TMP/tree" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "tokenize/pretok_uclass.inc differs" "$TMP/out"
check "a hand-edited pretok_uclass.inc fails, naming it" $? "$TMP/out"

# a delta whose [onig] line says what UCD 15.0 already says (U+0041 is a
# letter): stale, refused
sed 's/^\[onig\]$/[onig]\n0041          L/' "$PS_ROOT/scripts/unicode-hf-delta.txt" >"$TMP/delta"
python3 "$GEN" --check --delta "$TMP/delta" >"$TMP/out" 2>&1
[ $? -ne 0 ] && grep -q "U+0041 is already L in UCD" "$TMP/out"
check "a delta line the UCD already agrees with is refused" $? "$TMP/out"

# a category change in the delta moves a code point between the tables:
# U+2E42 (Unicode 8.0) called unassigned for unicode_categories
sed 's/^\[unicode_categories\]$/[unicode_categories]\n2E42          Cn/' \
    "$PS_ROOT/scripts/unicode-hf-delta.txt" >"$TMP/delta"
python3 "$GEN" --out "$TMP/tree" --delta "$TMP/delta" >/dev/null 2>&1 &&
    grep -q '{0x2E42, 0x2E4F}' "$TMP/tree/tokenize/unicode_tables.c"
check "the delta's categories reach the tables (U+2E42 no longer punctuation for HF)" $?

# the UCD of another version than the delta was checked against
mkdir -p "$TMP/ucd"
cp "$UCD/UnicodeData.txt" "$TMP/ucd/"
sed '1s/.*/# DerivedAge-16.0.0.txt/' "$UCD/DerivedAge.txt" >"$TMP/ucd/DerivedAge.txt"
python3 "$GEN" --check --ucd "$TMP/ucd" >"$TMP/out" 2>&1
[ $? -ne 0 ] && grep -q "UCD 16.0.0, but scripts/unicode-hf-delta.txt was made against UCD 15.0.0" "$TMP/out"
check "a UCD of another version is refused until the delta is checked against it" $? "$TMP/out"

done_testing
