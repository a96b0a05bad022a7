#!/bin/sh
# A program compiled against the previous release's public headers
# (tests/data/abi/prev, PROVENANCE.md there) runs against this library:
# tests/abi/old_caller.c, compiled with those headers only and linked with
# the built libpairshard.so by its soname, reads a set, cleans, tokenizes
# and preprocesses, with guard bytes after every struct the library fills
# for it. Also: the library carries the soname PS_ABI_VERSION names.
. "$PS_ROOT/tests/tap.sh"

case "$PS_BUILD" in
*/asan | */tsan)
    # The sanitizer builds' libraries need the sanitizer runtime to link.
    echo "ok 1 # SKIP the ABI is checked by the plain build"
    echo "1..1"
    exit 0
    ;;
esac

VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
LIB="$PS_BUILD/lib/libpairshard.so"
abi=$(abi_version)
soname=$(soname_of "$LIB")
[ -n "$abi" ] && [ "$soname" = "libpairshard.so.$abi" ]
check "the soname is libpairshard.so.PS_ABI_VERSION ($soname)" $?

# The library as a program finds it: by its soname.
mkdir -p "$TMP/lib"
ln -s "$LIB" "$TMP/lib/$soname"
ln -s "$soname" "$TMP/lib/libpairshard.so"
cc -std=c11 -Wall -Wextra -Werror -I"$PS_ROOT/tests/data/abi/prev" \
    "$PS_ROOT/tests/abi/old_caller.c" -o "$TMP/old_caller" \
    -L"$TMP/lib" -Wl,-rpath,"$TMP/lib" -lpairshard 2>"$TMP/cc.log"
check "the old caller compiles against the previous headers alone" $? "$TMP/cc.log"
! grep -q "PS_ABI_VERSION" "$PS_ROOT/tests/data/abi/prev/pairshard/common.h"
check "those headers are the previous release's (no PS_ABI_VERSION)" $?

"$PAIRSHARD" build -q --vocab "$VOCAB" --max-length 128 -o "$TMP/set" \
    "$DATA/spider/dev.json" >"$TMP/build.log" 2>&1
check "build Spider dev" $? "$TMP/build.log"
"$TMP/old_caller" "$TMP/set" "$VOCAB" "$DATA/spider/dev.json" >"$TMP/old.tap" 2>&1
check "the old caller runs against this library" $? "$TMP/old.tap"
relay_tap "$TMP/old.tap"
[ "$(grep -c '^ok' "$TMP/old.tap")" = "$(grep -c '^    ok(' "$PS_ROOT/tests/abi/old_caller.c")" ]
check "every one of its checks ran" $? "$TMP/old.tap"
done_testing
