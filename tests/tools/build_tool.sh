# Sourced by test scripts: build_tool NAME BUILD_DIR OUT [extra cc flags...]
# compiles tests/tools/NAME.c against BUILD_DIR/lib/libpairshard.a (a static
# link, so the tool runs the very library the suite built) into OUT. A
# sanitizer build of the library (make check-asan, check-tsan) needs the
# same sanitizer at link time, and gets it in the tool too.
build_tool() {
    _name=$1 _build=$2 _out=$3
    shift 3
    _lib="$_build/lib/libpairshard.a"
    _san=""
    if nm "$_lib" 2>/dev/null | grep -q ' U __tsan_'; then
        _san="-fsanitize=thread"
    elif nm "$_lib" 2>/dev/null | grep -q ' U __asan_'; then
        _san="-fsanitize=address,undefined"
    fi
    # shellcheck disable=SC2086
    ${CC:-cc} -std=c11 -O1 -g -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L \
        $_san -I"$PS_ROOT/include" "$@" -o "$_out" "$PS_ROOT/tests/tools/$_name.c" \
        "$_lib" \
        $(pkg-config --libs lmdb libzstd libutf8proc jansson libpcre2-8 libxxhash zlib nettle sqlite3) \
        -lm -pthread
}
