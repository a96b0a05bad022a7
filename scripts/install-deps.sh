#!/bin/sh
# Installs pairshard's build and test dependencies from Debian packages.
#
# Checks each dependency (a pkg-config module or a command) and installs the
# Debian packages of those that are missing with apt-get. With CI=true, or
# with --all, it runs apt-get install for every package on every run, so a
# missing entry in this list cannot hide behind a package installed earlier.
# `make` runs this script before it builds anything. With --abi it installs
# only what `make check-abi` needs (abidw and abidiff, from abigail-tools),
# which no other target needs.
set -eu

# pkg-config module : Debian package
LIBS="lmdb:liblmdb-dev libzstd:libzstd-dev libutf8proc:libutf8proc-dev
jansson:libjansson-dev libpcre2-8:libpcre2-dev libxxhash:libxxhash-dev
zlib:zlib1g-dev nettle:nettle-dev sqlite3:libsqlite3-dev cmocka:libcmocka-dev"
# command : Debian package
CMDS="cc:gcc make:make pkg-config:pkg-config python3:python3 node:nodejs
npm:npm zstd:zstd gzip:gzip"
# Python module (for Debian's /usr/bin/python3) : Debian package. scipy
# computes test_validate_scipy's reference: without it the test skips, and
# a skip fails CI (tests/skips-allowed.txt).
PYMODS="scipy:python3-scipy numpy:python3-numpy"
# data file : Debian package. The Unicode Character Database that
# scripts/gen-unicode.py generates tokenize/unicode_tables.c from
# (tests/cli/unicode_tables.sh regenerates it and compares).
FILES="/usr/share/unicode/UnicodeData.txt:unicode-data"

all=0
[ "${CI:-}" = "true" ] && all=1
for arg in "$@"; do
    case $arg in
    --all) all=1 ;;
    --abi)
        LIBS="" FILES=""
        CMDS="abidw:abigail-tools abidiff:abigail-tools"
        ;;
    *) echo "install-deps: unknown argument $arg" >&2; exit 2 ;;
    esac
done

missing=""
for pair in $LIBS; do
    mod=${pair%%:*} pkg=${pair#*:}
    if [ $all = 1 ] || ! pkg-config --exists "$mod" 2>/dev/null; then
        missing="$missing $pkg"
    fi
done
for pair in $CMDS; do
    cmd=${pair%%:*} pkg=${pair#*:}
    if [ $all = 1 ] || ! command -v "$cmd" >/dev/null 2>&1; then
        # node and npm may come from outside Debian (e.g. nodesource): only
        # install Debian's when the command is really absent.
        case $cmd in node|npm) command -v "$cmd" >/dev/null 2>&1 && continue ;; esac
        missing="$missing $pkg"
    fi
done
for pair in $PYMODS; do
    mod=${pair%%:*} pkg=${pair#*:}
    if [ $all = 1 ] || ! /usr/bin/python3 -c "import $mod" 2>/dev/null; then
        missing="$missing $pkg"
    fi
done

for pair in $FILES; do
    file=${pair%%:*} pkg=${pair#*:}
    if [ $all = 1 ] || ! [ -r "$file" ]; then
        missing="$missing $pkg"
    fi
done

[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
        echo "install-deps: need root (or sudo) to install:$missing" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >&2 || echo "install-deps: apt-get update failed; trying the cached lists" >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing >&2
