#!/bin/sh
# `make install` into a temporary prefix gives a working pairshard.pc: a
# program compiled with `pkg-config --cflags --libs pairshard` against the
# shared library, and with --static against the static one, runs.
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
    [ -x "$P/bin/pairshard" ] && [ -f "$P/lib/libpairshard.a" ] && [ -f "$P/lib/libpairshard.so" ]
check "installs binary, both libraries, headers and pairshard.pc" $?

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
nm -D --defined-only "$P/lib/libpairshard.so" | awk '{print $3}' | grep -v '^ps_' | grep -v '^_' >"$TMP/leaks"
[ ! -s "$TMP/leaks" ]
check "the shared library exports only ps_ symbols" $?

done_testing
