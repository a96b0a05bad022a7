#!/bin/sh
# report.html in a real browser: headless Chromium (Debian's chromium,
# installed here when missing) renders the page of a failing and a passing
# report; the screenshot must be a real picture (not blank, the verdict
# banner's colour at the top) and the DOM must hold the verdict and no
# script. The pages come from the report fixtures through the unit test
# binary (PS_REPORT_HTML_OUT), `pairshard validate --html` and `pairshard
# build` (DIR/report.html); a command that fails or writes no page fails.
. "$PS_ROOT/tests/tap.sh"

CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    if [ -z "$SUDO" ] || command -v sudo >/dev/null 2>&1; then
        # stale package lists: update once and retry; under the lock
        # scripts/apt-install.sh takes (tests run side by side)
        (
            flock 9
            timeout 300 $SUDO apt-get install -y chromium >"$TMP/apt.log" 2>&1 ||
                { timeout 300 $SUDO apt-get update >>"$TMP/apt.log" 2>&1 &&
                    timeout 300 $SUDO apt-get install -y chromium >>"$TMP/apt.log" 2>&1; }
        ) 9>>"${TMPDIR:-/tmp}/pairshard-apt.lock"
    fi
    CHROME=$(command -v chromium || true)
fi
if [ -z "$CHROME" ]; then
    echo "ok 1 # SKIP chromium is not installed and could not be installed"
    echo "1..1"
    exit 0
fi
UT="$PS_BUILD/tests/test_report_html"

chrome() { # extra args... URL
    timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$TMP/profile.XXXXXX")" "$@" 2>>"$TMP/chrome.log"
}

# PNG checks without PIL: size, many distinct byte values, and the colour
# of the verdict banner among the first rows of pixels.
png_ok() { # file r g b
    python3 - "$@" <<'PY'
import struct, sys, zlib
path, want = sys.argv[1], tuple(int(x) for x in sys.argv[2:5])
d = open(path, 'rb').read()
if d[:8] != b'\x89PNG\r\n\x1a\n' or len(d) < 20000:
    sys.exit("not a PNG or under 20 KB: %d bytes" % len(d))
pos, idat, w = 8, [], 0
while pos < len(d):
    n, t = struct.unpack('>I4s', d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    if t == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    elif t == b'IDAT':
        idat.append(body)
    pos += 12 + n
raw = zlib.decompress(b''.join(idat))
if depth != 8 or ctype not in (2, 6):
    sys.exit("unexpected PNG format %d/%d" % (depth, ctype))
if len(set(raw[: 4 * 1024 * 1024])) < 40:
    sys.exit("the picture is (nearly) one colour")
bpp = 4 if ctype == 6 else 3
stride = w * bpp
prev = bytearray(stride)
found = False
for y in range(min(h, 320)):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        if all(abs(line[x + k] - want[k]) <= 6 for k in range(3)):
            found = True
            break
    if found:
        break
    prev = line
if not found:
    sys.exit("the verdict colour %r is not in the first rows" % (want,))
PY
}

render() { # name html verdict-text r g b
    name=$1 html=$2 text=$3
    chrome --screenshot="$TMP/$name.png" --window-size=1280,2400 "file://$html" >/dev/null
    check "$name: chromium writes a screenshot" $?
    ok_if "$name: the screenshot is a real picture with the verdict colour" png_ok "$TMP/$name.png" "$4" "$5" "$6"
    chrome --dump-dom "file://$html" >"$TMP/$name.dom"
    check "$name: chromium dumps the DOM" $?
    grep -q "$text" "$TMP/$name.dom" && ! grep -qi "<script" "$TMP/$name.dom"
    check "$name: the DOM holds the verdict and no script" $?
    [ -n "${PS_REPORT_SHOT:-}" ] && cp "$TMP/$name.png" "$PS_REPORT_SHOT.$name.png"
    return 0
}

# 1. the fixtures, through the unit test
PS_REPORT_HTML_OUT="$TMP/fixture.html" CMOCKA_MESSAGE_OUTPUT=STDOUT "$UT" >"$TMP/ut.log" 2>&1
check "the unit test renders the fixtures" $?
[ -s "$TMP/fixture.html" ] && [ -s "$TMP/fixture.html.warn.html" ] && [ -s "$TMP/fixture.html.pass.html" ]
check "the fixture pages exist" $?
size=$(wc -c <"$TMP/fixture.html")
[ "$size" -lt 2097152 ]
check "the failing fixture's page is under 2 MB ($size bytes)" $?
render fail "$TMP/fixture.html" "Verdict: FAIL" 179 38 30
render warn "$TMP/fixture.html.warn.html" "Verdict: WARN" 138 83 0
render pass "$TMP/fixture.html.pass.html" "Verdict: PASS" 26 127 55

# 2. pairshard validate --html: two builds' statistics compared (a report.json
# is accepted as a statistics file). A validate without --html, or one that
# writes no page, is a failure: every build has it.
"$PAIRSHARD" validate -q --baseline "$DATA/report/pass.json" --current "$DATA/report/fail.json" \
    --html "$TMP/compare.html" >/dev/null 2>"$TMP/validate.err"
[ $? -eq 1 ] && [ -s "$TMP/compare.html" ]
check "validate --html: a failing comparison writes report.html (exit 1)" $? "$TMP/validate.err"
if [ -s "$TMP/compare.html" ]; then
    render compare "$TMP/compare.html" "Verdict: FAIL" 179 38 30
fi

# 3. a real build's report.html: a build that fails, or writes no page, is a
# failure (every build writes DIR/report.html)
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
"$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 \
    -o "$TMP/set" "$DATA/spider/dev.json" >"$TMP/build.log" 2>&1
check "build: Spider dev builds" $? "$TMP/build.log"
grep -q "Verdict: " "$TMP/set/report.html" 2>/dev/null
check "build: DIR/report.html exists and has a verdict" $?
if [ -f "$TMP/set/report.html" ]; then
    v=$(sed -n 's/.*<h1 id="verdict">Verdict: \([A-Z]*\).*/\1/p' "$TMP/set/report.html" | head -1)
    case "$v" in
    FAIL) rgb="179 38 30" ;; WARN) rgb="138 83 0" ;; *) rgb="26 127 55" ;;
    esac
    # shellcheck disable=SC2086
    render build "$TMP/set/report.html" "Verdict: $v" $rgb
fi

done_testing
