# Sourced by the CLI test scripts: a tiny TAP emitter.
#   ok_if "description" command...   runs the command; ok when it exits 0
#   check "description" <condition-exit-status> [file to show on failure]
#   skip "description" "why"          a skip, counted as one (never a pass)
#   relay_tap FILE                    another program's TAP output, renumbered
#   run_py SCRIPT [ARGS]              a Python TAP script on $PS_BUILD's library,
#                                     its lines renumbered, and a check that it ended
#   same_set DIR1 DIR2                 0 when two shard sets are byte-identical
#   abi_version [COMMON_H]            PS_ABI_VERSION (default: the source tree's)
#   soname_of LIB, needed_of FILE     a library's soname; a file's NEEDED entries
# Every script ends with `done_testing`.
n=0
fails=0
check() { # description status [file]
    n=$((n + 1))
    if [ "$2" -eq 0 ]; then echo "ok $n - $1"; else
        echo "not ok $n - $1"
        fails=$((fails + 1))
        if [ -n "${3:-}" ] && [ -r "$3" ]; then head -20 "$3" | sed 's/^/# /'; fi
    fi
}
skip() { # description why
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
}
ok_if() { # description command...
    d=$1; shift
    if "$@"; then check "$d" 0; else check "$d" 1; fi
}
python_modules() { # module...: 0 when /usr/bin/python3 imports them all, after
    # installing python3-MODULE for those it lacks (scripts/apt-install.sh)
    for m in "$@"; do
        /usr/bin/python3 -c "import $m" 2>/dev/null ||
            sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt-$m.log" "python3-$m"
        /usr/bin/python3 -c "import $m" 2>/dev/null || return 1
    done
}
done_testing() { echo "1..$n"; [ "$fails" -eq 0 ]; }
sanitizer_preload() { # library: the sanitizer runtimes it links, for LD_PRELOAD
    # into an uninstrumented python3 (nothing for a plain build)
    for rt in asan ubsan tsan; do
        ldd "$1" 2>/dev/null | awk -v rt="lib$rt.so" 'index($1, rt) == 1 { print $3 }'
    done | paste -sd' ' -
}
run_py() { # script [args]: its TAP lines, renumbered into this script's, run by
    # ${PY:-/usr/bin/python3} on $PS_BUILD's libpairshard; a sanitizer build's
    # runtimes are loaded first, since python3 itself is not instrumented (and
    # leaks by design, so leak checking is off there)
    PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so"
    export PAIRSHARD_LIB
    preload=$(sanitizer_preload "$PAIRSHARD_LIB")
    if [ -n "$preload" ]; then
        LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
            "${PY:-/usr/bin/python3}" "$@"
    else
        "${PY:-/usr/bin/python3}" "$@"
    fi >"$TMP/py.out" 2>"$TMP/py.err"
    py_rc=$?
    relay_tap "$TMP/py.out"
    grep -q '^1\.\.[0-9]' "$TMP/py.out"
    check "$(basename "$1") ran to its end and exited 0" $(( py_rc == 0 && $? == 0 ? 0 : 1 ))
    [ "$py_rc" -eq 0 ] || sed 's/^/# /' "$TMP/py.err" | tail -20
}
same_set() { # dir1 dir2: the same files, each byte-identical (preprocess/ included)
    [ "$(cd "$1" && find . | sort)" = "$(cd "$2" && find . | sort)" ] || return 1
    for f in $(cd "$1" && find . -type f); do cmp -s "$1/$f" "$2/$f" || return 1; done
}
abi_version() { sed -n 's/^#define PS_ABI_VERSION \([0-9]*\)$/\1/p' "${1:-$PS_ROOT/include/pairshard/common.h}"; }
soname_of() { readelf -d "$1" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p'; }
needed_of() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }
relay_tap() { # file: another program's TAP lines, renumbered as this script's
    while IFS= read -r line; do
        case $line in
        "not ok "*) check "${line#not ok * - }" 1 ;;
        "ok "*"# SKIP"*) n=$((n + 1)); echo "ok $n # SKIP ${line#*# SKIP }" ;;
        "ok "*) check "${line#ok * - }" 0 ;;
        "#"*) echo "$line" ;;
        esac
    done <"$1"
}
: "${PAIRSHARD:?PAIRSHARD must point at the pairshard binary}"
: "${PS_ROOT:?}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pairshard-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
DATA="$PS_ROOT/tests/data"
