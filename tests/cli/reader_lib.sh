#!/bin/sh
# libpairshard-reader.so (docs/ARCHITECTURE.md, "The two libraries"): its
# soname; its NEEDED list is exactly the allowed set (zstd, jansson and the
# C library), and a copy linked with SQLite fails that check; neither
# library needs libcudart; it installs no jansson allocator hook; it exports
# the reader's API and common.h's functions, all of which libpairshard also
# exports. Then examples/read_batches.c, linked with it alone (an rpath: no
# LD_LIBRARY_PATH, no LD_PRELOAD), reads a set on a "host without
# libcudart" ($PAIRSHARD_CUDART naming a missing file): no libcudart is
# loaded, and the batches are those the full library gives.
. "$PS_ROOT/tests/tap.sh"

LIB="$PS_BUILD/lib/libpairshard-reader.so"
FULL="$PS_BUILD/lib/libpairshard.so"
abi=$(abi_version)
soname=$(soname_of "$LIB")
[ -n "$abi" ] && [ "$soname" = "libpairshard-reader.so.$abi" ]
check "the soname is libpairshard-reader.so.PS_ABI_VERSION ($soname)" $?

# A sanitizer build's libraries also need the sanitizer runtimes.
SAN=
nm -D --undefined-only "$LIB" | grep -q ' __asan_' && SAN="-fsanitize=address,undefined"
nm -D --undefined-only "$LIB" | grep -q ' __tsan_' && SAN="-fsanitize=thread"

# needed_ok LIB: 0 when LIB's NEEDED entries are all allowed and zstd and
# jansson are among them; the others are listed in $TMP/extra.
needed_ok() {
    needed_of "$1" | grep -Ev '^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|ld-linux-[a-z0-9_-]+\.so\.2|libzstd\.so\.1|libjansson\.so\.4)$' |
        { if [ -n "$SAN" ]; then grep -Ev '^lib(a|ub|t)san\.so\.[0-9]+$'; else cat; fi; } >"$TMP/extra"
    [ ! -s "$TMP/extra" ] && needed_of "$1" | grep -q '^libzstd\.so\.1$' &&
        needed_of "$1" | grep -q '^libjansson\.so\.4$'
}
needed_of "$LIB" | tr '\n' ' ' | sed 's/^/# NEEDED: /; s/ $/\n/'
needed_ok "$LIB"
check "it needs libzstd, libjansson and the C library, nothing else" $? "$TMP/extra"

# The check fails on a copy that also links SQLite (as libpairshard does).
objs=$(make -s -C "$PS_ROOT" BUILD="${PS_BUILD#"$PS_ROOT"/}" -p -n 2>/dev/null |
    sed -n 's/^READER_OBJS := //p' | head -n 1 | sed "s|\$(BUILD)|$PS_BUILD|g")
# shellcheck disable=SC2086
cc -shared $SAN -Wl,--no-as-needed -o "$TMP/libplanted.so" $objs -lzstd -ljansson -lsqlite3 \
    -pthread 2>"$TMP/ld.log"
check "a copy of its objects links with -lsqlite3" $? "$TMP/ld.log"
! needed_ok "$TMP/libplanted.so" && grep -q '^libsqlite3\.so' "$TMP/extra"
check "the NEEDED check refuses it, naming libsqlite3" $? "$TMP/extra"

for l in "$LIB" "$FULL"; do
    ! needed_of "$l" | grep -q cudart
    check "$(basename "$l") does not need libcudart (CUDA is loaded at run time)" $?
done

# jansson reads its allocator without a lock, and a trainer may use jansson
# itself: the reader library must not set it (common/json_where.c, which
# does, is libpairshard's only).
! nm -D --undefined-only "$LIB" | grep -q ' json_set_alloc_funcs$'
check "it installs no jansson allocator hook (no json_set_alloc_funcs)" $?

nm -D --defined-only "$LIB" | awk '{print $3}' | sort >"$TMP/exports"
grep -hoE '^PS_API [^(]*[ *](ps_[a-z0-9_]+)\(' "$PS_ROOT/include/pairshard/reader.h" \
    "$PS_ROOT/include/pairshard/common.h" | sed 's/.*[ *]\(ps_[a-z0-9_]*\)($/\1/' |
    sort >"$TMP/declared"
comm -13 "$TMP/exports" "$TMP/declared" >"$TMP/missing"
[ -s "$TMP/declared" ] && [ ! -s "$TMP/missing" ]
check "it exports every function reader.h and common.h declare" $? "$TMP/missing"
grep -v '^ps_' "$TMP/exports" >"$TMP/leaks"
[ ! -s "$TMP/leaks" ]
check "it exports only ps_ symbols" $? "$TMP/leaks"
nm -D --defined-only "$FULL" | awk '{print $3}' | sort >"$TMP/full-exports"
comm -23 "$TMP/exports" "$TMP/full-exports" >"$TMP/only-reader"
[ ! -s "$TMP/only-reader" ]
check "libpairshard exports all of them too" $? "$TMP/only-reader"

"$PAIRSHARD" build -q --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" --max-length 128 \
    --shards 2 -o "$TMP/set" "$DATA/spider/dev.json" >"$TMP/build.log" 2>&1
check "build Spider dev" $? "$TMP/build.log"

# By its soname, as an installed program finds it; the rpath instead of
# LD_LIBRARY_PATH.
mkdir -p "$TMP/lib" "$TMP/full"
ln -s "$LIB" "$TMP/lib/$soname" && ln -s "$soname" "$TMP/lib/libpairshard-reader.so"
ln -s "$FULL" "$TMP/full/libpairshard.so.$abi" && ln -s "libpairshard.so.$abi" "$TMP/full/libpairshard.so"
# shellcheck disable=SC2086
cc -std=c11 -pedantic -Wall -Wextra -Werror $SAN -I"$PS_ROOT/include" \
    "$PS_ROOT/examples/read_batches.c" -o "$TMP/rb" -L"$TMP/lib" -Wl,-rpath,"$TMP/lib" \
    -lpairshard-reader 2>"$TMP/cc.log" &&
    cc -std=c11 $SAN -I"$PS_ROOT/include" "$PS_ROOT/examples/read_batches.c" -o "$TMP/rb-full" \
        -L"$TMP/full" -Wl,-rpath,"$TMP/full" -lpairshard 2>>"$TMP/cc.log"
check "read_batches links with -lpairshard-reader (and with -lpairshard)" $? "$TMP/cc.log"
needed_of "$TMP/rb" | grep -v '^lib\(a\|ub\|t\)san' >"$TMP/rb-needed"
grep -q "^$soname\$" "$TMP/rb-needed" && ! grep -q '^libpairshard\.so' "$TMP/rb-needed" &&
    ! ldd "$TMP/rb" | grep -Eq 'cudart|sqlite|pcre2|utf8proc|nettle|lmdb'
check "it needs $soname, and ldd finds no libcudart, SQLite, PCRE2, utf8proc, nettle or LMDB" $? \
    "$TMP/rb-needed"

NOCUDA="$TMP/no-such-dir/libcudart.so.13"
# Its ps_dependency_versions names what it links, and the runtime's state.
cat >"$TMP/versions.c" <<'C'
#include <pairshard/common.h>
#include <stdio.h>
int main(void)
{
    char text[1024];
    return ps_dependency_versions(text, sizeof text) < 0 || fputs(text, stdout) < 0;
}
C
# shellcheck disable=SC2086
cc -std=c11 $SAN -I"$PS_ROOT/include" "$TMP/versions.c" -o "$TMP/versions" -L"$TMP/lib" \
    -Wl,-rpath,"$TMP/lib" -lpairshard-reader 2>"$TMP/cc5.log" &&
    PAIRSHARD_CUDART="$NOCUDA" "$TMP/versions" >"$TMP/versions.out" 2>>"$TMP/cc5.log"
[ $? -eq 0 ] && [ "$(cut -d' ' -f1 "$TMP/versions.out" | paste -sd' ' -)" = "zstd jansson xxhash cuda" ] &&
    grep -q "^cuda not loaded (PAIRSHARD_CUDART=$NOCUDA: " "$TMP/versions.out"
check "its ps_dependency_versions: zstd, jansson, xxhash, and cuda not loaded, naming why" $? \
    "$TMP/versions.out"
env -u LD_LIBRARY_PATH -u LD_PRELOAD PAIRSHARD_CUDART="$NOCUDA" LD_DEBUG=files \
    LD_DEBUG_OUTPUT="$TMP/ld-debug" "$TMP/rb" "$TMP/set" 16 >"$TMP/rb.out" 2>"$TMP/rb.err"
check "read_batches reads the set through the reader library without libcudart" $? "$TMP/rb.err"
cat "$TMP"/ld-debug.* >"$TMP/loaded" 2>/dev/null
# LD_DEBUG=files logs every dlopen tried ("file=PATH ... dynamically loaded
# by CALLER": the reader library, or ASan's runtime, which intercepts
# dlopen) and every library initialised ("calling init: PATH").
grep -q 'calling init: .*/libpairshard-reader\.so' "$TMP/loaded" &&
    grep -Eq "file=$NOCUDA .*dynamically loaded by .*(libpairshard-reader|libasan)" "$TMP/loaded" &&
    ! grep -q 'file=libcudart' "$TMP/loaded" && ! grep -q 'calling init: .*cudart' "$TMP/loaded"
check "the loader loaded the reader library, which tried \$PAIRSHARD_CUDART alone: no libcudart" $? \
    "$TMP/loaded"
records=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"]["records"])' \
    "$TMP/set/manifest.json")
tail -n 1 "$TMP/rb.out" | grep -q "^epoch: [0-9]* batches, $records records, [0-9]* real tokens$" &&
    [ "$(grep -c '^batch ' "$TMP/rb.out")" -gt 1 ]
check "every one of the set's $records records came, in batches of 16" $? "$TMP/rb.out"
env -u LD_LIBRARY_PATH -u LD_PRELOAD "$TMP/rb-full" "$TMP/set" 16 >"$TMP/rb-full.out" 2>"$TMP/rb-full.err"
cmp -s "$TMP/rb.out" "$TMP/rb-full.out"
check "the same batches as libpairshard's (with the CUDA runtime where installed)" $? \
    "$TMP/rb-full.err"

# Where this host has a CUDA runtime, the default search loads it (dlopen):
# the device path is real where libcudart is, without linking it.
if ldconfig -p 2>/dev/null | grep -q 'libcudart\.so\.1[23] '; then
    env -u LD_LIBRARY_PATH -u LD_PRELOAD -u PAIRSHARD_CUDART LD_DEBUG=files \
        LD_DEBUG_OUTPUT="$TMP/ld-debug2" "$TMP/rb" "$TMP/set" 16 >"$TMP/rb2.out" 2>"$TMP/rb2.err"
    cat "$TMP"/ld-debug2.* 2>/dev/null | grep -q 'calling init: .*/libcudart\.so\.1[23]$' &&
        cmp -s "$TMP/rb.out" "$TMP/rb2.out"
    check "with libcudart installed, the reader dlopens it and reads the same batches" $? "$TMP/rb2.err"
else
    skip "with libcudart installed, the reader dlopens it" "no libcudart.so.12/13 on this host"
fi

done_testing
