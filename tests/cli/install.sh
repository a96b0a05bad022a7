#!/bin/sh
# `make install` into a temporary prefix gives a working pairshard.pc: a
# program compiled with `pkg-config --cflags --libs pairshard` against the
# shared library, and with --static against the static one, runs; the
# pkg-config flags carry no -D (the public headers need none: they compile
# with plain -std=c11 -pedantic); examples/read_batches.c, built the same
# way, reads a set's epoch through the installed library by its soname;
# built with pkg-config's pairshard-reader instead, it needs only the
# installed libpairshard-reader and reads the same batches; DESTDIR stages
# an install whose .pc files name the final prefix.
. "$PS_ROOT/tests/tap.sh"

case "$PS_BUILD" in
*/asan)
    # The sanitizer build's libraries need the sanitizer runtime to link.
    echo "ok 1 # SKIP install is checked by the plain build"
    echo "1..1"
    exit 0
    ;;
esac

P="$TMP/prefix"
make -s -C "$PS_ROOT" BUILD="${PS_BUILD#$PS_ROOT/}" install PREFIX="$P" >"$TMP/install.log" 2>&1
check "make install PREFIX=... succeeds" $?
[ -f "$P/lib/pkgconfig/pairshard.pc" ] && [ -f "$P/include/pairshard/pairshard.h" ] &&
    [ -x "$P/bin/pairshard" ] && [ -f "$P/lib/libpairshard.a" ] && [ -f "$P/lib/libpairshard.so" ] &&
    [ -f "$P/lib/libpairshard-reader.so" ] && [ -f "$P/lib/pkgconfig/pairshard-reader.pc" ]
check "installs binary, the static and both shared libraries, headers, pairshard{,-reader}.pc" $?

cat >"$TMP/app.c" <<'C'
#include <pairshard/pairshard.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    ps_cleaner *c;
    ps_error err;
    if (ps_cleaner_create(NULL, &c, &err) != 0)
        return 1;
    ps_cleaner_free(c);
    printf("%s %s\n", ps_version_string(), ps_strerror(PS_EFORMAT));
    return strcmp(ps_err_name(PS_ENOENT), "PS_ENOENT") != 0;
}
C
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
cc "$TMP/app.c" -o "$TMP/app" $(pkg-config --cflags --libs pairshard) 2>"$TMP/cc.log"
check "compiles and links against the shared library via pkg-config" $?
LD_LIBRARY_PATH="$P/lib" "$TMP/app" >"$TMP/app.out"
check "the linked program runs" $?
grep -q "malformed input" "$TMP/app.out"
check "ps_strerror reaches the caller" $?
cc "$TMP/app.c" -o "$TMP/app-static" $(pkg-config --cflags pairshard) "$P/lib/libpairshard.a" \
    $(pkg-config --libs --static pairshard | sed 's/-lpairshard//') 2>"$TMP/cc2.log" &&
    "$TMP/app-static" >/dev/null
check "links statically with pkg-config --static" $?
pkg-config --cflags --libs --static pairshard >"$TMP/flags" &&
    pkg-config --cflags --libs --static pairshard-reader >>"$TMP/flags"
! grep -q -- '-D' "$TMP/flags"
check "pkg-config's flags define no macros" $? "$TMP/flags"

abi=$(abi_version "$P/include/pairshard/common.h")
cc -std=c11 -pedantic -Wall -Wextra -Werror "$PS_ROOT/examples/read_batches.c" \
    -o "$TMP/read_batches" $(pkg-config --cflags --libs pairshard) 2>"$TMP/cc3.log"
check "examples/read_batches.c compiles with -std=c11 -pedantic and pkg-config's flags alone" $? \
    "$TMP/cc3.log"
readelf -d "$TMP/read_batches" | grep -q "NEEDED.*\[libpairshard\.so\.$abi\]" &&
    [ -L "$P/lib/libpairshard.so.$abi" ] && [ -f "$P/lib/libpairshard.so.$abi.$(
        sed -n 's/^#define PS_VERSION_STRING "\(.*\)"$/\1/p' "$P/include/pairshard/common.h")" ]
check "it needs libpairshard.so.$abi, installed as a link to libpairshard.so.$abi.VERSION" $?
"$P/bin/pairshard" build -q --vocab "$DATA/vocab/bert-base-uncased.vocab.txt" --max-length 128 \
    --shards 2 -o "$TMP/set" "$DATA/spider/dev.json" >"$TMP/build.log" 2>&1
check "the installed pairshard builds Spider dev" $? "$TMP/build.log"
LD_LIBRARY_PATH="$P/lib" "$TMP/read_batches" "$TMP/set" 16 >"$TMP/rb.out" 2>"$TMP/rb.err"
check "read_batches reads the set's epoch through the installed library" $? "$TMP/rb.err"
records=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["totals"]["records"])' \
    "$TMP/set/manifest.json")
tail -n 1 "$TMP/rb.out" | grep -q "^epoch: [0-9]* batches, $records records, [0-9]* real tokens$" &&
    [ "$(grep -c '^batch ' "$TMP/rb.out")" -gt 1 ]
check "every one of the set's $records records came, in batches of 16" $? "$TMP/rb.out"

cc -std=c11 -pedantic -Wall -Wextra -Werror "$PS_ROOT/examples/read_batches.c" \
    -o "$TMP/read_batches_r" $(pkg-config --cflags --libs pairshard-reader) 2>"$TMP/cc4.log"
check "read_batches compiles with pkg-config's pairshard-reader flags alone" $? "$TMP/cc4.log"
needed_of "$TMP/read_batches_r" >"$TMP/rb-needed"
grep -q "^libpairshard-reader\.so\.$abi\$" "$TMP/rb-needed" && ! grep -q '^libpairshard\.so' "$TMP/rb-needed" &&
    [ -L "$P/lib/libpairshard-reader.so.$abi" ] && [ -f "$P/lib/libpairshard-reader.so.$abi.$(
        sed -n 's/^#define PS_VERSION_STRING "\(.*\)"$/\1/p' "$P/include/pairshard/common.h")" ]
check "it needs libpairshard-reader.so.$abi alone, installed as a link to .so.$abi.VERSION" $? \
    "$TMP/rb-needed"
LD_LIBRARY_PATH="$P/lib" "$TMP/read_batches_r" "$TMP/set" 16 >"$TMP/rb-r.out" 2>"$TMP/rb-r.err" &&
    cmp -s "$TMP/rb.out" "$TMP/rb-r.out"
check "it reads the same batches through the installed reader library" $? "$TMP/rb-r.err"

# The Python package outside the source tree (no build/lib beside it) finds
# the installed libraries: the Loader libpairshard-reader, the Preprocessor
# libpairshard.
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    mkdir -p "$TMP/py" && cp -R "$PS_ROOT/python/pairshard" "$TMP/py/"
    env -u PAIRSHARD_LIB -u PAIRSHARD_READER_LIB PYTHONPATH="$TMP/py" LD_LIBRARY_PATH="$P/lib" \
        /usr/bin/python3 - "$TMP/set" >"$TMP/py.out" 2>&1 <<'PY'
import sys
import pairshard
from pairshard import _lib as L
with pairshard.Loader(sys.argv[1], batch_size=16, shuffle=False, rank=0, world_size=1,
                      as_torch=False) as ld:
    n = sum(len(b["ids"]) for b in ld)
with pairshard.Preprocessor(sys.argv[1]) as pp:
    pp.encode("How many singers do we have?")
print(n, L.path("reader"), L.path("full"))
PY
    grep -q "^$records libpairshard-reader\.so\.$abi libpairshard\.so\.$abi\$" "$TMP/py.out"
    check "installed: the Python Loader reads the set through libpairshard-reader, the Preprocessor uses libpairshard" $? "$TMP/py.out"
else
    skip "installed: the Python Loader and Preprocessor" "python3-numpy is not installed"
fi

D="$TMP/stage"
make -s -C "$PS_ROOT" BUILD="${PS_BUILD#$PS_ROOT/}" install DESTDIR="$D" PREFIX=/opt/ps \
    >"$TMP/install2.log" 2>&1 &&
    [ -f "$D/opt/ps/lib/libpairshard.so.$abi" ] && [ -f "$D/opt/ps/include/pairshard/reader.h" ] &&
    grep -q '^prefix=/opt/ps$' "$D/opt/ps/lib/pkgconfig/pairshard.pc" &&
    [ -f "$D/opt/ps/lib/libpairshard-reader.so.$abi" ] &&
    grep -q '^prefix=/opt/ps$' "$D/opt/ps/lib/pkgconfig/pairshard-reader.pc"
check "make install DESTDIR=... PREFIX=/opt/ps stages under DESTDIR for /opt/ps" $? "$TMP/install2.log"

nm -D --defined-only "$P/lib/libpairshard.so" "$P/lib/libpairshard-reader.so" | awk 'NF == 3 {print $3}' |
    grep -v '^ps_' | grep -v '^_' >"$TMP/leaks"
[ ! -s "$TMP/leaks" ]
check "the shared libraries export only ps_ symbols" $? "$TMP/leaks"
make -s -C "$PS_ROOT" BUILD="${PS_BUILD#$PS_ROOT/}" uninstall PREFIX="$P" >"$TMP/uninstall.log" 2>&1 &&
    [ ! -e "$P/lib/libpairshard-reader.so.$abi" ] && [ ! -e "$P/lib/pkgconfig/pairshard-reader.pc" ] &&
    [ ! -e "$P/lib/libpairshard.so.$abi" ]
check "make uninstall removes both libraries and both .pc files" $? "$TMP/uninstall.log"

done_testing
